# The tests' process of R assert mode (issue 49): runs in the toolchain sandbox, never in the service.
#
# Started as a copy of R's executable that its own user cannot read (chmod 100): the kernel makes the process
# non-dumpable, so the candidate's process (same uid) cannot open its /proc files or ptrace it. It reads the
# sentinel (rlvr_nonce) and the tests (rlvr_tests.R), deletes both, then starts the candidate's process
# (r_candidate.R: the candidate's code in an R of its own, its stdout going to stderr) and talks to it over two
# FIFOs with plain data (r_wire.R). Every name the tests read that the candidate defines as a function (and this
# R does not) is a function here that crosses over; the tests run in this pristine R's global environment,
# stopifnot counted; their quit() ends them (status 0: their end; else a failure). The sentinel and what ran go on
# this process's stdout, which the candidate cannot reach. A failed test exits 1 saying "Test failed"; the tests'
# own error before any call into the candidate prints ``{sentinel}:bad_reference:...``; the candidate's process
# ending early exits 0 without the sentinel (never a pass).
local({
  source("rlvr_wire.R", local = TRUE)
  slurp <- function(f) readChar(f, file.size(f), useBytes = TRUE)
  sentinel <- trimws(slurp("rlvr_nonce"))
  tests <- slurp("rlvr_tests.R")
  unlink(c("rlvr_nonce", "rlvr_tests.R"))
  ran <- new.env()
  ran$tests <- 1L; ran$asserts <- 0L; ran$calls <- 0L; ran$nonfinite <- FALSE
  real_quit <- base::quit
  say <- function(what) {
    cat("\n", sentinel, ":", what, "\n", sep = "")
    flush(stdout())
    real_quit(save = "no", status = 0, runLast = FALSE)  # exit 0: the driver keeps the stdout of a run that ended well
  }
  ended <- function() {
    cat("\nthe candidate's program ended before the tests finished\n", file = stderr())
    real_quit(save = "no", status = 0, runLast = FALSE)  # exit 0 without the sentinel: never a pass
  }
  failed <- function(message) {
    cat(message, "\nTest failed: ", message, "\n", sep = "", file = stderr())
    real_quit(save = "no", status = 1, runLast = FALSE)
  }
  one_line <- function(s) gsub("\n", "\\\\n", paste(s, collapse = " "))
  exprs <- tryCatch(parse(text = tests, keep.source = FALSE), error = function(e) e)
  if (inherits(exprs, "error")) say(paste0("bad_reference:", one_line(conditionMessage(exprs))))
  if (system("mkfifo rlvr_req rlvr_rep") != 0) real_quit(save = "no", status = 1)
  system("Rscript --vanilla rlvr_candidate.R </dev/null 1>&2", wait = FALSE)
  req <- file("rlvr_req", "wb", raw = TRUE)
  rep <- file("rlvr_rep", "rb", raw = TRUE)
  ask <- function(msg) {
    sent <- tryCatch({ rlvr_wire$send(req, msg); TRUE }, error = function(e) FALSE)
    if (!sent) ended()
    reply <- tryCatch(rlvr_wire$read(rep), error = function(e) NULL)
    if (is.null(reply) || !is.list(reply$value)) ended()
    if (reply$nonfinite) ran$nonfinite <- TRUE
    reply$value
  }
  call <- function(name, args) {
    ran$calls <- ran$calls + 1L
    reply <- ask(list(call = name, args = args))
    if (is.list(reply$value) && length(reply$value) == 1L) return(reply$value[[1L]])
    stop(if (is.character(reply$raise) && length(reply$raise) == 1L) reply$raise else "an unreadable answer",
         call. = FALSE)
  }
  # the names the tests read that this R does not define: the candidate's, if it defines them as functions
  wanted <- Filter(function(n) !exists(n, envir = globalenv()), unique(all.names(exprs)))
  hello <- ask(list(names = as.character(wanted)))
  if (!is.character(hello$names) && !is.null(hello$names)) {
    cat(if (is.character(hello$raise)) hello$raise else "the candidate's code failed", "\n", file = stderr())
    real_quit(save = "no", status = 1, runLast = FALSE)
  }
  for (n in intersect(hello$names, wanted)) {
    assign(n, local({ name <- n; function(...) call(name, list(...)) }), envir = globalenv())
  }
  # what the tests call to check, counted; their quit ends them, not this process
  assign("stopifnot", function(...) {
    ran$asserts <- ran$asserts + 1L
    mc <- match.call()
    mc[[1L]] <- quote(base::stopifnot)
    eval(mc, parent.frame())
  }, envir = globalenv())
  stop_tests <- function(status) structure(class = c("rlvr_quit", "condition"), list(message = "", call = NULL, status = status))
  quit_tests <- function(save = "default", status = 0, runLast = TRUE) stop(stop_tests(status))
  assign("quit", quit_tests, envir = globalenv())
  assign("q", quit_tests, envir = globalenv())
  outcome <- tryCatch({
    for (e in exprs) eval(e, globalenv())
    NULL
  }, rlvr_quit = function(q) q, error = function(e) e)
  if (inherits(outcome, "rlvr_quit")) {
    if (!identical(as.numeric(outcome$status), 0)) failed(paste("the tests quit with status", outcome$status))
  } else if (inherits(outcome, "error")) {
    message <- conditionMessage(outcome)
    missing <- any(vapply(wanted, function(n) grepl(sprintf("could not find function \"%s\"", n), message, fixed = TRUE) ||
                                                grepl(sprintf("object '%s' not found", n), message, fixed = TRUE), TRUE))
    failure <- grepl("is not TRUE|are not all TRUE", message)
    if (!failure && !missing && ran$calls == 0L) say(paste0("bad_reference:", one_line(message)))
    failed(message)
  }
  cat("\n", sentinel, "\n", sep = "")
  say(sprintf('ran:{"tests":%d,"asserts":%d,"calls":%d%s}', ran$tests, ran$asserts, ran$calls,
              if (ran$nonfinite) ',"nonfinite":1' else ""))
})
