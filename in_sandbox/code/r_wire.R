# The plain data R's two assert-mode processes exchange (issue 49; r_tests.R and r_candidate.R source it).
# A message is one value framed as "<byte length>\n<bytes>". A value: NULL "N"; a logical, integer, double or
# character vector as its tag ("l", "i", "d", "c"), the byte length of its body, ":", the body (T/F/N a logical;
# comma-separated integers or NA; doubles as %.17g, NA, NaN, Inf, -Inf, so every bit crosses; strings each as
# "<bytes>:<UTF-8>" or "!" for NA); a list "L<bytes>:" then its elements; a value with attributes (names, dim,
# class...) "A" then their names, their values (a list) and the bare value. Anything else (a function, an
# environment, an external pointer, nesting deeper than 200) is refused: it never crosses.
rlvr_wire <- local({
  MAX_DEPTH <- 200L
  framed <- function(tag, body) paste0(tag, nchar(body, type = "bytes"), ":", body)
  dbl <- function(x) ifelse(is.na(x) & !is.nan(x), "NA", ifelse(is.nan(x), "NaN",
                      ifelse(is.infinite(x), ifelse(x > 0, "Inf", "-Inf"), sprintf("%.17g", x))))
  enc <- function(x, depth) {
    if (depth > MAX_DEPTH) stop("containers nested too deep")
    a <- attributes(x)
    if (!is.null(a)) {
      attributes(x) <- NULL
      return(paste0("A", enc(names(a), depth + 1L), enc(unname(a), depth + 1L), enc(x, depth + 1L)))
    }
    if (is.null(x)) return("N")
    switch(typeof(x),
      logical = framed("l", paste(ifelse(is.na(x), "N", ifelse(x, "T", "F")), collapse = "")),
      integer = framed("i", paste(ifelse(is.na(x), "NA", as.character(x)), collapse = ",")),
      double = framed("d", paste(dbl(x), collapse = ",")),
      character = framed("c", paste(vapply(x, function(s) if (is.na(s)) "!" else
        paste0(nchar(enc2utf8(s), type = "bytes"), ":", enc2utf8(s)), ""), collapse = "")),
      list = framed("L", paste(vapply(x, enc, "", depth + 1L), collapse = "")),
      stop(paste("a", typeof(x), "is not plain data")))
  }
  bad <- function() stop("not an encoded value", call. = FALSE)
  # a decoder over one message's bytes; state: the position; `nonfinite` set where a double was NaN or infinite
  decoder <- function(r) {
    pos <- 1L
    nonfinite <- FALSE
    count <- function() {  # digits up to ":", the colon consumed
      stop_at <- which(r[pos:min(length(r), pos + 20L)] == as.raw(58L))[1]
      if (is.na(stop_at)) bad()
      n <- suppressWarnings(as.integer(rawToChar(r[pos:(pos + stop_at - 2L)])))
      if (stop_at < 2L || is.na(n) || n < 0L) bad()
      pos <<- pos + stop_at
      n
    }
    take <- function(n) {
      if (pos + n - 1L > length(r)) bad()
      s <- if (n == 0L) "" else rawToChar(r[pos:(pos + n - 1L)])
      pos <<- pos + n
      s
    }
    strings <- function(body) {
      b <- charToRaw(body)
      out <- character(0)
      at <- 1L
      while (at <= length(b)) {
        if (b[at] == as.raw(33L)) { out <- c(out, NA_character_); at <- at + 1L; next }
        colon <- which(b[at:min(length(b), at + 20L)] == as.raw(58L))[1]
        if (is.na(colon)) bad()
        n <- suppressWarnings(as.integer(rawToChar(b[at:(at + colon - 2L)])))
        if (colon < 2L || is.na(n) || at + colon + n - 1L > length(b)) bad()
        s <- if (n == 0L) "" else rawToChar(b[(at + colon):(at + colon + n - 1L)])
        Encoding(s) <- "UTF-8"
        out <- c(out, s)
        at <- at + colon + n
      }
      out
    }
    value <- function(depth) {
      if (depth > MAX_DEPTH || pos > length(r)) bad()
      tag <- rawToChar(r[pos])
      pos <<- pos + 1L
      if (tag == "N") return(NULL)
      if (tag == "A") {
        nms <- value(depth + 1L)
        vals <- value(depth + 1L)
        x <- value(depth + 1L)
        if (!is.character(nms) || !is.list(vals) || length(nms) != length(vals)) bad()
        attributes(x) <- stats::setNames(vals, nms)
        return(x)
      }
      if (!tag %in% c("l", "i", "d", "c", "L")) bad()
      n <- count()
      if (tag == "L") {
        end <- pos + n
        out <- list()
        while (pos < end) out[[length(out) + 1L]] <- list(value(depth + 1L))
        if (pos != end) bad()
        return(lapply(out, `[[`, 1L))
      }
      body <- take(n)
      if (tag == "c") return(strings(body))
      if (tag == "l") {
        ch <- strsplit(body, "")[[1]]
        if (!all(ch %in% c("T", "F", "N"))) bad()
        return(ifelse(ch == "N", NA, ch == "T"))
      }
      tokens <- if (body == "") character(0) else strsplit(body, ",", fixed = TRUE)[[1]]
      if (tag == "i") {
        if (!all(grepl("^(-?[0-9]+|NA)$", tokens))) bad()
        return(suppressWarnings(as.integer(tokens)))
      }
      if (!all(grepl("^([-+]?[0-9.]+(e[-+]?[0-9]+)?|NA|NaN|Inf|-Inf)$", tokens))) bad()
      if (any(tokens %in% c("NaN", "Inf", "-Inf"))) nonfinite <<- TRUE
      out <- suppressWarnings(as.double(tokens))
      out[tokens == "NaN"] <- NaN
      out
    }
    list(value = function() { v <- value(0L); if (pos != length(r) + 1L) bad(); v },
         nonfinite = function() nonfinite)
  }
  list(
    encode = function(x) enc(x, 0L),
    send = function(con, x) {
      s <- enc(x, 0L)
      writeBin(charToRaw(paste0(nchar(s, type = "bytes"), "\n", s)), con)
      flush(con)
    },
    read = function(con) {  # list(value, nonfinite), or NULL where the other side closed its end
      head <- readLines(con, n = 1L, warn = FALSE)
      n <- suppressWarnings(as.integer(head))
      if (length(head) != 1L || is.na(n) || n < 0L) return(NULL)
      r <- if (n == 0L) raw(0) else readBin(con, "raw", n)
      if (length(r) != n) return(NULL)
      d <- decoder(r)
      v <- d$value()
      list(value = v, nonfinite = d$nonfinite())
    })
})
