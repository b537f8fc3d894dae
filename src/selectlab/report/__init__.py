"""The last stage: result tables, figures, the HTML report and the reproducible archive.

Submodules are imported on their own (`selectlab.report.tables`, `.figures`, `.html`,
`.archive`) so that building a table or an archive never pulls in matplotlib.
"""
