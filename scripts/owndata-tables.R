#!/usr/bin/env Rscript
# Writes the real public tables of experiments/own-data.md as CSV files, from the
# data that Debian's R packages ship (nothing is downloaded):
#
#   apt-get install -y r-base-core r-cran-mlbench r-cran-kernlab r-cran-aer
#   Rscript scripts/owndata-tables.R OUTDIR
#
# Every table gets a two-valued label column (yes/no unless said) so that
# `splitguard train --format csv --label L --positive P` reads it as is; the
# other columns are written as R holds them (factors as their level names,
# missing values as empty cells). A table's own row identifier, if any, is
# dropped (the row number is the example ID). The tables of r-cran-modeldata
# are kept aside for independent checks and are not written here.
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "owndata"
dir.create(out, showWarnings = FALSE, recursive = TRUE)

load_table <- function(name, pkg) {
  e <- new.env()
  data(list = name, package = pkg, envir = e)
  as.data.frame(get(name, envir = e))
}

yesno <- function(x) factor(ifelse(x, "yes", "no"), levels = c("no", "yes"))

tables <- list(
  # name, package, data set, label column, positive value, preparation
  list("spam", "kernlab", "spam", "type", "spam", function(d) d),
  list("ticdata", "kernlab", "ticdata", "CARAVAN", "insurance", function(d) d),
  list("pima", "mlbench", "PimaIndiansDiabetes", "diabetes", "pos", function(d) d),
  list("breastcancer", "mlbench", "BreastCancer", "Class", "malignant", function(d) {
    d$Id <- NULL
    # Ordered factors of the levels 1..10: write their numbers.
    for (c in setdiff(names(d), "Class")) d[[c]] <- as.integer(as.character(d[[c]]))
    d
  }),
  list("hmda", "AER", "HMDA", "deny", "yes", function(d) d),
  list("resumenames", "AER", "ResumeNames", "call", "yes", function(d) {
    d$name <- NULL # the first name was the experiment's treatment, one per row
    d
  }),
  list("smokeban", "AER", "SmokeBan", "smoker", "yes", function(d) d),
  list("letter_a", "mlbench", "LetterRecognition", "letter_A", "yes", function(d) {
    d$letter_A <- yesno(d$lettr == "A")
    d$lettr <- NULL
    d
  })
)

cat(sprintf("%-13s %7s %6s %-10s %-10s %s\n", "table", "rows", "pos%", "label", "positive", "file"))
for (t in tables) {
  d <- t[[6]](load_table(t[[3]], t[[2]]))
  label <- t[[4]]
  stopifnot(label %in% names(d), length(unique(na.omit(d[[label]]))) == 2)
  d <- d[!is.na(d[[label]]), , drop = FALSE]
  file <- file.path(out, paste0(t[[1]], ".csv"))
  write.csv(d, file, row.names = FALSE, na = "")
  pos <- mean(as.character(d[[label]]) == t[[5]])
  cat(sprintf("%-13s %7d %6.1f %-10s %-10s %s\n", t[[1]], nrow(d), 100 * pos, label, t[[5]], file))
}
