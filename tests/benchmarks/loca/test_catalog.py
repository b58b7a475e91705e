from pos_bench.benchmarks.loca.catalog import domain_of, role_of, tool_catalog


def test_catalog_roles_follow_the_first_matching_rule():
    def tool(name, label=None):
        description = f"[{label}] does things" if label else "does things"
        return {"type": "function", "function": {"name": name, "description": description, "parameters": {}}}

    cases = {
        ("claim_done", None): "finish",
        ("run_claim_done_check", None): "finish",
        ("anything", "claim_done"): "finish",
        ("python_execute", None): "deterministic_compute",
        ("run_command", "terminal"): "deterministic_compute",
        ("email_search_and_delete", None): "side_effect",
        ("excel_export_sheet", None): "side_effect",
        ("db_describe_table", None): "metadata_discovery",
        ("bq_get_dataset_info", None): "metadata_discovery",
        ("fs_read_file", None): "evidence_retrieval",
        ("kb_lookup", None): "evidence_retrieval",
        ("memory_remember", None): "other",
    }
    for (name, label), role in cases.items():
        assert role_of(tool(name, label)) == role, name
    assert (
        domain_of(tool("fs_read_file", "filesystem")) == "filesystem"
        and domain_of(tool("fs_read_file")) == "fs"
    )
    catalog = tool_catalog([tool("b_list"), tool("a_list"), tool("claim_done"), tool("x_write", "files")])
    assert catalog["domains"] == [
        {"name": "a", "tool_count": 1},
        {"name": "b", "tool_count": 1},
        {"name": "claim", "tool_count": 1},
        {"name": "files", "tool_count": 1},
    ]
    assert list(catalog["tools_by_role"]) == ["metadata_discovery", "side_effect", "finish"]
    assert [t["function"]["name"] for t in catalog["tools_by_role"]["metadata_discovery"]] == [
        "a_list",
        "b_list",
    ]
