"""Stopword lists of the offline toolkit.

Stage 1 of issue 11: every list that used to live in its caller, moved here unchanged under a
name that says who uses it. They are unified in a following step.
"""
from __future__ import annotations

# from kgviz/providers/embedders.py
ENGLISH = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    s t d ll m re ve""".split()
)

# from kgviz/tasks/answer.py
ANSWER_STOP = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being am do does
    did has have had what which who whom whose when where why how many much that this these those it
    its as into than then there their his her he she they them him i we you our your my me also not
    no yes if so such can could would should will may might one both either neither same other""".split()
)

# from kgviz/tasks/kg_rag.py
KG_RAG_STOP = frozenset(
    """a an the of in on at to for from by with and or but as is are was were be been being do does
    did has have had what which who whom whose when where why how that this these those it its his
    her their there than then into onto about after before during between both either neither not
    no yes did can could would should will shall may might much many one ones also same other
    first last name named called""".split()
)

# from kgviz/tasks/kg_infused.py
KG_INFUSED_STOP = frozenset(
    """a an the of in on at to for from by with and or but as is are was were be been being do does
    did has have had what which who whom whose when where why how that this these those it its his
    her their there than then into about after before during between both either not no yes can
    could would should will may might also same other""".split()
)

# from kgviz/offline/judge.py
JUDGE_STOP = frozenset(
    """a an the of in on at to for from by with and or but is are was were be been being has have had do
    does did what which who whom whose when where why how that this these those it its as into than then
    there their his her he she they them him i we you our your my me also not no yes if so one answer
    """.split())
