"""The example notebook runs top to bottom (its cells assert what they show), and claims render richly in Jupyter."""

import os

import pytest

import theorems

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_claims_render_as_latex_and_html():
    claim = theorems.REGISTRY["finetune"]
    assert claim._repr_latex_().startswith("$\\displaystyle ") and claim.statement in claim._repr_latex_()
    html = claim._repr_html_()
    assert "<b>finetune</b>" in html and "Thm 3.9" in html and "<code>gamma</code>" in html and "recorded verdict" in html


def test_example_notebook_executes():
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    notebook = nbformat.read(os.path.join(ROOT, "examples", "checking_a_claim.ipynb"), as_version=4)
    nbclient.NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": ROOT}}).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    assert any("text/html" in o.get("data", {}) for o in outputs)       # the claim's rich view
    assert any("agree" in o.get("text", "") for o in outputs)           # the check's verdict
