"""The rules judge v2 (clindiag/judge.py): each rule on invented names, then its measured accuracy on the labelled
fixture generated from the 604 staged cases."""

import pytest

from pos_bench.benchmarks.clindiag.data import AnswerKey
from pos_bench.benchmarks.clindiag.fixture import ABBREVIATED, EPONYM_PAIRS
from pos_bench.benchmarks.clindiag.judge import RulesJudge, Submission, appears_in, definitions, strip_label


def correct(submitted, reference, *, record="", reasoning=""):
    key = AnswerKey(reference, "", "")
    return RulesJudge().judge(Submission(submitted, "", reasoning), key, record=record).diagnosis_correct


@pytest.mark.parametrize(
    "submitted",
    [
        "Not Quellmann-Orsk syndrome",
        "No Quellmann-Orsk syndrome",
        "Quellmann-Orsk syndrome ruled out",
        "Quellmann-Orsk syndrome was excluded",
        "Quellmann-Orsk syndrome unlikely",
        "Negative for Quellmann-Orsk syndrome",
        "Without Quellmann-Orsk syndrome",
        "Diagnosis: not Quellmann-Orsk syndrome",
        "Quellmann-Orsk syndrome or sarcoidosis",
        "Quellmann-Orsk syndrome; sarcoidosis",
    ],
)
def test_negations_exclusions_and_alternatives_are_wrong(submitted):
    assert not correct(submitted, "Quellmann-Orsk syndrome")


@pytest.mark.parametrize(
    "submitted",
    [
        "Final diagnosis: Quellmann-Orsk syndrome.",
        "The most likely diagnosis is Quellmann–Orsk syndrome",
        "Diagnosis - quellmann orsk syndrome",
        "Probable Quellmann-Orsk syndrome",
        "Quellmann-Orsk's syndrome",
        "Syndrome, Quellmann-Orsk",
        "Quellmann-Orsk",
    ],
)
def test_labels_hedges_order_possessives_and_head_words_do_not_matter(submitted):
    assert correct(submitted, "Quellmann-Orsk syndrome")


def test_unicode_accents_spellings_plurals_and_numerals_are_folded():
    assert correct("Behcet disease", "Behçet's disease")
    assert correct("Haemolytic anaemia of Zarnow", "hemolytic anemia of Zarnow")
    assert correct("Zarnow cysts", "Zarnow cyst")
    assert correct("Zarnow dysplasia type 2", "Zarnow dysplasia type II")
    assert correct("Zarnow β-globin fusion", "Zarnow beta globin fusion")
    assert not correct("Zarnow dysplasia type 1", "Zarnow dysplasia type II")


def test_abbreviations_from_the_table_from_the_record_and_in_brackets():
    assert correct("SLE", "Systemic lupus erythematosus")
    assert correct("Multiple sclerosis", "MS")
    record = "Findings matched pseudoxanthoma-like Varn elastosis (PVE) in the skin biopsy."
    assert definitions(record) == {"PVE": "pseudoxanthoma like Varn elastosis"}
    assert correct("PVE", "Pseudoxanthoma-like Varn elastosis", record=record)
    assert not correct("PVE", "Pseudoxanthoma-like Varn elastosis")  # nothing defines it
    assert correct("QOS", "Quellmann Orsk syndrome")  # an unknown capitals abbreviation of the initials
    assert correct("GRX-2", "Glarven retinal xanthomatosis type 2 (GRX-2)")
    assert correct("Glarven retinal xanthomatosis type 2", "Glarven retinal xanthomatosis type 2 (GRX-2)")
    assert not correct("ms", "Marfan syndrome")  # lower case is a word, not an abbreviation


def test_synonym_groups_and_added_aliases():
    assert correct("Edwards syndrome", "Trisomy 18")
    assert correct("Addison's disease", "Primary adrenal insufficiency")
    judge = RulesJudge(aliases={"Quellmann-Orsk syndrome": ["Varn fever"]})
    assert judge.judge(
        Submission("Varn fever"), AnswerKey("Quellmann-Orsk syndrome", "", "")
    ).diagnosis_correct


def test_broader_related_complicated_and_opposite_names_are_wrong():
    assert not correct("Lymphoma", "Diffuse large B-cell lymphoma")
    assert not correct("Quellmann-Orsk syndrome with renal failure", "Quellmann-Orsk syndrome")
    assert not correct("Quellmann-Orsk syndrome secondary to sarcoidosis", "Quellmann-Orsk syndrome")
    assert not correct("Acquired Zarnow dysplasia", "Congenital Zarnow dysplasia")
    assert not correct("Chronic Zarnow hepatitis", "Acute Zarnow hepatitis")
    assert not correct("Non-Zarnow neuropathy", "Zarnow neuropathy")
    assert not correct("Cushing disease", "Cushing syndrome")


def decision(submitted, reference, *, reasoning=""):
    return RulesJudge().judge(Submission(submitted, "", reasoning), AnswerKey(reference, "", "")).decision


def test_only_the_allowlist_admits_an_extra_word_and_the_reasoning_never_does():
    reference = "Zarnow dysplasia"
    assert decision("Zarnow dysplasia type 2", reference) == "accept"
    assert decision("Chronic bilateral Zarnow dysplasia", reference) == "accept"
    assert decision("Zarnow dysplasia purple", reference) == "undecided"
    assert decision("Zarnow dysplasia purple", reference, reasoning="The lesion was purple.") == "undecided"


def test_differential_hit_reads_entries_and_refuses_negated_ones():
    key = AnswerKey("Trisomy 18", "", "")
    judge = RulesJudge()
    assert judge.judge(Submission("x", "Turner syndrome; trisomy-18"), key).differential_hit
    assert judge.judge(Submission("x", "1. Turner syndrome 2. Edwards syndrome"), key).differential_hit
    assert not judge.judge(Submission("x", "Turner syndrome; not trisomy 18"), key).differential_hit
    assert not judge.judge(Submission("x", "trisomy 180"), key).differential_hit


def test_label_stripping_and_word_runs():
    assert strip_label("Final diagnosis: probable Varn fever.") == "Varn fever"
    assert appears_in("Behçet's disease", "History of behcet disease in the mother")
    assert not appears_in("Behçet's disease", "Behçet was considered; disease course mild")


@pytest.mark.parametrize(
    ("submitted", "reasoning"),
    [
        ("Doubtful Quellmann-Orsk syndrome", "The biopsy leaves it doubtful."),
        ("Quellmann-Orsk syndrome disproven", "Serology disproven; disproven by biopsy."),
        ("Questionable Quellmann-Orsk syndrome", "Questionable findings."),
        ("Quellmann-Orsk syndrome refuted", "Refuted by the second biopsy."),
        ("Uncertain Quellmann-Orsk syndrome", "uncertain"),
        ("Quellmann-Orsk syndrome?", ""),
        (
            "Sarcoidosis, Varn fever, gout, Quellmann-Orsk syndrome",
            "Sarcoidosis, Varn fever and gout fit too.",
        ),
        ("Quellmann-Orsk syndrome / Varn fever", "Varn fever fits the rash."),
        ("Quellmann-Orsk syndrome and/or Varn fever", "Varn fever fits the rash."),
        ("Quellmann-Orsk syndrome, Varn", "Varn"),
        ("Quellmann-Orsk syndrome (sarcoidosis)", "sarcoidosis"),
        ("Sarcoidosis (Quellmann-Orsk syndrome)", ""),
        ("Sarcoidosis Quellmann-Orsk syndrome", "sarcoidosis"),
    ],
)
def test_no_reasoning_talks_a_doubt_or_a_list_into_the_diagnosis(submitted, reasoning):
    assert not correct(submitted, "Quellmann-Orsk syndrome", reasoning=reasoning)


def test_an_abbreviation_only_the_reasoning_defines_is_undecided():
    reasoning = "Biopsy showed Varn-type xanthomatous keratosis (VXK) of both palms."
    assert decision("VXK", "Varn-type xanthomatous keratosis", reasoning=reasoning) == "undecided"


def test_synonym_rewrites_apply_to_whole_names_only():
    assert correct("High blood pressure", "Hypertension")
    assert not correct("Primary pulmonary high blood pressure", "Primary pulmonary hypertension")
    assert correct("Reiter's syndrome", "Reactive arthritis")  # an eponym group
    judge = RulesJudge(aliases={"Varn fever": ["Zarnow disease"]})
    key = AnswerKey("Quellmann Varn fever", "", "")
    assert not judge.judge(Submission("Quellmann Zarnow disease"), key).diagnosis_correct


def test_field_equivalents_ise_spellings_cancer_and_abbreviations_inside_a_name():
    assert correct("Necrotising Zarnow vasculitis", "Necrotizing Zarnow vasculitis")
    assert correct("Zarnow organisation defect", "Zarnow organization defect")
    assert correct("Paralysed Zarnow nerve", "Paralyzed Zarnow nerve")
    assert correct("Zarnow duct cancer", "Zarnow duct carcinoma")
    assert not correct("Zarnow duct cancer", "Zarnow duct sarcoma")
    assert correct("MDD with Varn features", "Major depressive disorder with Varn features")  # table
    assert correct("Neonatal QOS", "Neonatal Quellmann Orsk syndrome")  # initials of a reference run


def test_nested_brackets_in_a_reference_do_not_stop_its_name_matching():
    reference = "Zarnow duct carcinoma of the left breast (T1b pN0 (i+))"
    assert correct("Zarnow duct carcinoma of the left breast", reference)
    assert correct(reference, reference)
    assert not correct("Zarnow duct carcinoma of the right breast", reference)


def test_abbreviations_and_eponyms_from_a_list_written_apart_from_the_judge_are_mostly_accepted():
    """The fixture's own phrase/abbreviation and eponym lists (clindiag/fixture.py), inside invented names: the
    judge's tables and its initials rule cover at least 90% of them."""
    inside = [
        correct(f"Recurrent {abbreviation} of the Varn type", f"Recurrent {phrase} of the Varn type")
        for phrase, abbreviation in ABBREVIATED
    ]
    eponyms = [correct(a, b) and correct(b, a) for a, b in EPONYM_PAIRS]
    assert sum(inside) >= 0.9 * len(inside) and sum(eponyms) >= 0.85 * len(eponyms)


def test_an_allowlisted_qualifier_beside_one_of_its_kind_in_the_reference_is_not_accepted():
    reference = "Zarnow fistula between the left atrium and the left vein"
    assert decision("Zarnow fistula between the right atrium and the left vein", reference) != "accept"
    assert decision("Zarnow fistula between the left atrium and the left vein", reference) == "accept"


@pytest.mark.parametrize(
    "submitted, expected",
    [
        ("Zarnow dysplasia", "accept"),
        ("Zarn\u200bow dysplasia", "accept"),
        ("Ｚarnow dysplasia", "accept"),
        ("Zаrnow dysplasia", "undecided"),
        ("~~Zarnow dysplasia~~", "undecided"),
        ("<i>Zarnow dysplasia", "undecided"),
        ("Zarnow dysplasia ✓", "undecided"),
        ("It isn't Zarnow dysplasia", "reject"),
        ("Zarnow dysplasia (ruled out)", "reject"),
        ("History of Zarnow dysplasia", "undecided"),
        ("Zarnow dysplasia; sarcoidosis", "reject"),
    ],
)
def test_normalisation_folds_width_and_zero_width_and_refuses_look_alikes_and_markup(submitted, expected):
    assert decision(submitted, "Zarnow dysplasia") == expected


def test_a_remark_after_a_reference_that_has_a_cause_is_not_accepted():
    reference = "Zarnow neuropathy due to Kellin enzyme deficiency"
    assert decision(reference, reference) == "accept"
    assert decision(f"{reference} (resolved)", reference) == "undecided"


@pytest.mark.parametrize(
    "submitted",
    [
        "- {n}\n- Adult syndrome",
        "{n}\nTuberculosis",
        "• {n} • Tuberculosis",
        "Tuberculosis\n\n{n}",
    ],
)
def test_a_list_written_as_lines_or_bullets_is_never_accepted(submitted):
    n = "Pulmonary sarcoidosis"
    verdict = RulesJudge().judge(Submission(submitted.format(n=n), "", ""), AnswerKey(n, "", ""))
    assert not verdict.diagnosis_correct


@pytest.mark.parametrize("submitted", ["!{n}", "{n}!", "¬{n}", "{n} ✗", ";{n}"])
def test_a_mark_other_than_a_full_stop_is_never_accepted(submitted):
    n = "Pulmonary sarcoidosis"
    verdict = RulesJudge().judge(Submission(submitted.format(n=n), "", ""), AnswerKey(n, "", ""))
    assert not verdict.diagnosis_correct


def test_a_closing_full_stop_is_still_the_name():
    n = "Pulmonary sarcoidosis"
    assert RulesJudge().judge(Submission(f"{n}.", "", ""), AnswerKey(n, "", "")).diagnosis_correct
