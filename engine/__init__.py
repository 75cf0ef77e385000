"""The machinery that runs claims and judges them: the claims themselves live in ``theorems``.

``engine`` knows a claim only through its declared fields (``theorems.core.Theorem``) and the
registry; a claim module never imports from here except the verdict types it returns
(``engine.verdict``).  Modules: ``session`` (what a command line asks for, resolved into points,
run and summed up), ``runner`` (one point, serially, in processes or on Dask), ``verdict`` (the
statistics: every test, its comparison count and its effect size), ``report``, ``junit``,
``figures``, ``baseline``, ``power``, ``compare``.
"""
