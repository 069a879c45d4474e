"""Verification of answers: judge (claim verdicts through the Reasoner), funnel (where a gold
answer was lost), metrics (EM/F1/Acc/Coverage) and comparison (the result types of a comparison).
The claim model and abstention rules are ``kgviz.claims`` and the answer normalisation
``kgviz.answer_norm`` (leaves the offline judge shares); the HTML for verdicts and the exported
case file is ``kgviz.viz.case_file``. Import the submodules directly."""
