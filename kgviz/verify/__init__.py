"""Verification of answers: claims (split + abstention), check (the offline judge), judge (claim
verdicts through the Reasoner), funnel (where a gold answer was lost), metrics (EM/F1/Acc/Coverage)
and case_file (HTML for verdicts and the exported case file). Import the submodules directly."""
