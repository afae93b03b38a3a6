#!/usr/bin/env Rscript
# Writes the second and third independent checks of experiments/own-data.md (issue 29,
# "Starting from the baseline"): thirteen tables of Debian's R packages that no run of this
# project had read before the rule was chosen (nothing is downloaded): eight first, then five
# of 2,000-50,000 rows for the pre-registered check of the rule's boundary:
#
#   apt-get install -y r-base-core r-cran-mlbench r-cran-aer r-cran-modeldata
#   Rscript scripts/owndata-fresh.R OUTDIR
#
# Label columns and their positive values: sonar Class=M (mines), ionosphere Class=bad,
# swisslabor participation=yes, vehicle_van van=yes (Class "van" against the other three),
# bivariate Class=Two (modeldata's bivariate_train), satellite_damp damp=yes ("damp grey
# soil" against the other five), wachurn churn=Yes, lendingclub Class=bad; cps1988
# parttime=yes, stackoverflow Remote=Remote, hpc_long long=yes (class "L" against the other
# three), grants class=successful (modeldata's grants_other), doctorvisits visited=yes (visits > 0).
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) >= 1) args[1] else "owndata-fresh"
dir.create(out, showWarnings = FALSE, recursive = TRUE)
suppressMessages({library(mlbench); library(AER); library(modeldata)})
w <- function(d, name) {
  write.csv(d, file.path(out, paste0(name, ".csv")), row.names = FALSE)
  cat(name, nrow(d), "rows,", ncol(d), "columns\n")
}
data(Sonar); w(Sonar, "sonar")
data(Ionosphere); w(Ionosphere, "ionosphere")
data(SwissLabor); w(SwissLabor, "swisslabor")
data(Vehicle); Vehicle$van <- ifelse(Vehicle$Class == "van", "yes", "no"); Vehicle$Class <- NULL; w(Vehicle, "vehicle_van")
data(bivariate); w(bivariate_train, "bivariate")
data(Satellite); Satellite$damp <- ifelse(Satellite$classes == "damp grey soil", "yes", "no"); Satellite$classes <- NULL; w(Satellite, "satellite_damp")
data(wa_churn); w(wa_churn, "wachurn")
data(lending_club); w(lending_club, "lendingclub")
data(CPS1988); w(CPS1988, "cps1988")
data(stackoverflow); w(stackoverflow, "stackoverflow")
data(hpc_data); hpc_data$long <- ifelse(hpc_data$class == "L", "yes", "no"); hpc_data$class <- NULL; w(hpc_data, "hpc_long")
data(grants); w(grants_other, "grants")
data(DoctorVisits); DoctorVisits$visited <- ifelse(DoctorVisits$visits > 0, "yes", "no"); DoctorVisits$visits <- NULL; w(DoctorVisits, "doctorvisits")
