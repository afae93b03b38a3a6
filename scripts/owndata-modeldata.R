#!/usr/bin/env Rscript
# Writes the independent check tables of experiments/own-data.md (issue 29) from
# Debian's r-cran-modeldata (nothing is downloaded), tables that were not looked at
# while the data-driven defaults were chosen:
#
#   apt-get install -y r-base-core r-cran-modeldata
#   Rscript scripts/owndata-modeldata.R OUTDIR
#
# Label columns and their positive values (the minority class):
#   attrition Attrition=Yes, twoclass Class=Class2, cells class=WS (its Train/Test
#   column `case` dropped), pdspeech class=control (its `id` dropped), addata
#   Class=Impaired, credit Status=bad, mlcchurn churn=yes.
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "owndata-modeldata"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
suppressMessages(library(modeldata))
w <- function(d, name) {
  write.csv(d, file.path(out, paste0(name, ".csv")), row.names = FALSE)
  cat(name, nrow(d), "rows,", ncol(d), "columns\n")
}
data(attrition); w(attrition, "attrition")
data(two_class_dat); w(two_class_dat, "twoclass")
data(cells); cells$case <- NULL; w(cells, "cells")
data(pd_speech); pd_speech$id <- NULL; w(pd_speech, "pdspeech")
data(ad_data); w(ad_data, "addata")
data(credit_data); w(credit_data, "credit")
data(mlc_churn); w(mlc_churn, "mlcchurn")
