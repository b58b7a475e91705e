import pytest

from pos_bench.extras import MissingExtra, require


def test_a_missing_extra_is_one_sentence_naming_the_extra_and_both_install_commands():
    with pytest.raises(MissingExtra) as caught:
        require("rca", "json", "no_such_package_here", what="RCA-100")
    message = str(caught.value)
    assert "\n" not in message and message.startswith("RCA-100 needs the `rca` extra")
    assert (
        "no_such_package_here not installed" in message and "json" not in message.split("(")[1].split(")")[0]
    )
    assert "uv sync --inexact --extra rca" in message and "pip install 'pos_bench[rca]'" in message


def test_installed_modules_pass():
    require("local", "json", "pathlib", what="anything")
