"""The reports: the paper's tables beside ours, the figures and the report page, read from the run records a
results folder holds (:mod:`fsnn.report.collect`) and written by ``fsnn-report tables|figures|page``. Nothing here
imports the training suite (:mod:`fsnn.suite`)."""
