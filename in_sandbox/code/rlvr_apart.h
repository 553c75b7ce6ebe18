/* Assert mode apart for C and C++ (issue 49): the typed wire, the framing, the tests' runner, the candidate's
 * call server. Shipped by verifiers/kinds/code/apart_compiled.py as a file of the job (never part of the service).
 *
 * Two executables: ``rlvr_cand`` (the candidate's translation unit and, after it, the generated call server) and
 * ``main`` (the trusted tests' unit: this header, the problem's prelude, a generated stub per entry function and
 * the tests). ``main`` makes itself non-dumpable, reads and deletes the sentinel (rlvr_nonce), then starts
 * ``rlvr_cand`` with a pipe of requests on its fd 3, a pipe of replies on its fd 4, its stdout sent to stderr, and
 * no other descriptor. A call is one frame each way (``<length>\n<payload>``) of tagged text:
 *   i<decimal>;  an integer     d<%.17g>;  a float (nan, inf)     b0; b1;  a bool     s<n>:<bytes>  a string
 *   l<n>:...  a list or set     m<n>:...  a map (key, value, ...)   t<n>:...  a tuple   n;  none   o...  some
 * request ``f<index>;`` and the arguments; reply ``r`` and the value, or ``x`` and a string (the candidate's
 * exception). The tests' side decodes as the type the entry function declares and nothing else: a malformed or
 * mistyped reply fails the test. The verdict (the sentinel, then what ran) goes to ``main``'s stdout, which the
 * candidate's process has no descriptor for and cannot open (``main`` is not dumpable).
 */
#ifndef RLVR_APART_H
#define RLVR_APART_H
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifndef __cplusplus
#include <stdbool.h>
#endif

typedef struct { char *p; size_t n, cap; } rlvr_buf;
typedef struct { const char *p, *end; } rlvr_in;

static void rlvr_die(const char *why) {
  fprintf(stderr, "\n%s\n", why);
  fflush(stderr);
  _exit(1);
}

static void rlvr_add(rlvr_buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + n + 1) cap *= 2;
    b->p = (char *)realloc(b->p, cap);
    if (!b->p) rlvr_die("out of memory on the wire");
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

static void rlvr_addf(rlvr_buf *b, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  rlvr_add(b, tmp, (size_t)n);
}

static void rlvr_put_i(rlvr_buf *b, long long v) { rlvr_addf(b, "i%lld;", v); }
static void rlvr_put_u(rlvr_buf *b, unsigned long long v) { rlvr_addf(b, "i%llu;", v); }
static void rlvr_put_b(rlvr_buf *b, int v) { rlvr_add(b, v ? "b1;" : "b0;", 3); }
static void rlvr_put_d(rlvr_buf *b, double v) {
  if (isnan(v)) rlvr_add(b, "dnan;", 5);
  else if (isinf(v)) rlvr_add(b, v > 0 ? "dinf;" : "d-inf;", v > 0 ? 5 : 6);
  else rlvr_addf(b, "d%.17g;", v);
}
static void rlvr_put_s(rlvr_buf *b, const char *s, size_t n) {
  rlvr_addf(b, "s%zu:", n);
  rlvr_add(b, s, n);
}
static void rlvr_put_n(rlvr_buf *b, char tag, size_t n) { rlvr_addf(b, "%c%zu:", tag, n); }

/* -- reading: strict; any mismatch calls rlvr_bad (the tests' side: the candidate's answer is not the type) -- */
static const char *rlvr_want = "the declared type";
static void rlvr_bad(rlvr_in *in) {
  (void)in;
  char why[300];
  snprintf(why, sizeof why, "Test failed: the candidate's answer is not a %s (or is malformed on the wire)",
           rlvr_want);
  rlvr_die(why);
}
static int rlvr_peek(rlvr_in *in, char tag) { return in->p < in->end && *in->p == tag; }
static void rlvr_tag(rlvr_in *in, char tag) {
  if (!rlvr_peek(in, tag)) rlvr_bad(in);
  in->p++;
}
static const char *rlvr_token(rlvr_in *in, char stop, char *tmp, size_t cap) {
  size_t k = 0;
  while (in->p < in->end && *in->p != stop) {
    if (k + 1 >= cap) rlvr_bad(in);
    tmp[k++] = *in->p++;
  }
  if (in->p >= in->end || k == 0) rlvr_bad(in);
  in->p++;
  tmp[k] = 0;
  return tmp;
}
static long long rlvr_get_i(rlvr_in *in, long long lo, long long hi) {
  char tmp[32], *e;
  rlvr_tag(in, 'i');
  rlvr_token(in, ';', tmp, sizeof tmp);
  errno = 0;
  long long v = strtoll(tmp, &e, 10);
  if (*e || errno || v < lo || v > hi) rlvr_bad(in);
  return v;
}
static unsigned long long rlvr_get_u(rlvr_in *in, unsigned long long hi) {
  char tmp[32], *e;
  rlvr_tag(in, 'i');
  rlvr_token(in, ';', tmp, sizeof tmp);
  errno = 0;
  if (tmp[0] == '-') rlvr_bad(in);
  unsigned long long v = strtoull(tmp, &e, 10);
  if (*e || errno || v > hi) rlvr_bad(in);
  return v;
}
static double rlvr_get_d(rlvr_in *in) {
  char tmp[64], *e;
  rlvr_tag(in, 'd');
  rlvr_token(in, ';', tmp, sizeof tmp);
  double v = strtod(tmp, &e);
  if (*e) rlvr_bad(in);
  return v;
}
static int rlvr_get_b(rlvr_in *in) {
  rlvr_tag(in, 'b');
  if (in->end - in->p < 2 || (in->p[0] != '0' && in->p[0] != '1') || in->p[1] != ';') rlvr_bad(in);
  int v = in->p[0] == '1';
  in->p += 2;
  return v;
}
static size_t rlvr_get_n(rlvr_in *in, char tag) {
  char tmp[32], *e;
  rlvr_tag(in, tag);
  rlvr_token(in, ':', tmp, sizeof tmp);
  errno = 0;
  unsigned long long n = strtoull(tmp, &e, 10);
  if (*e || errno || tmp[0] == '-' || n > (unsigned long long)(in->end - in->p)) rlvr_bad(in);
  return (size_t)n;
}
static char *rlvr_get_s(rlvr_in *in, size_t *len) { /* malloc'd, NUL-terminated; "n;" is NULL */
  if (rlvr_peek(in, 'n')) {
    rlvr_tag(in, 'n');
    rlvr_tag(in, ';');
    if (len) *len = 0;
    return NULL;
  }
  size_t n = rlvr_get_n(in, 's');
  char *s = (char *)malloc(n + 1);
  if (!s) rlvr_die("out of memory on the wire");
  memcpy(s, in->p, n);
  s[n] = 0;
  in->p += n;
  if (len) *len = n;
  return s;
}
static void rlvr_done(rlvr_in *in) {
  if (in->p != in->end) rlvr_bad(in);
}

/* -- framing ------------------------------------------------------------------------------------------------ */
static int rlvr_write_all(int fd, const char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k, n -= (size_t)k;
  }
  return 0;
}
static int rlvr_send(int fd, const rlvr_buf *b) {
  char head[32];
  int h = snprintf(head, sizeof head, "%zu\n", b->n);
  return rlvr_write_all(fd, head, (size_t)h) || rlvr_write_all(fd, b->p ? b->p : "", b->n) ? -1 : 0;
}
static int rlvr_read_byte(int fd, char *c) {
  for (;;) {
    ssize_t k = read(fd, c, 1);
    if (k < 0 && errno == EINTR) continue;
    return k == 1 ? 0 : -1;
  }
}
static int rlvr_recv(int fd, rlvr_buf *b) { /* 0, or -1 at the end of the pipe */
  size_t n = 0;
  char c;
  int digits = 0;
  for (;;) {
    if (rlvr_read_byte(fd, &c)) return -1;
    if (c == '\n' && digits) break;
    if (c < '0' || c > '9' || ++digits > 12) return -1;
    n = n * 10 + (size_t)(c - '0');
  }
  b->n = 0;
  rlvr_add(b, "", 0);
  while (b->n < n) {
    char tmp[65536];
    size_t want = n - b->n < sizeof tmp ? n - b->n : sizeof tmp;
    ssize_t k = read(fd, tmp, want);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    rlvr_add(b, tmp, (size_t)k);
  }
  return 0;
}

/* -- the tests' side: start the candidate, call it, say what ran ---------------------------------------------- */
static int rlvr_req_fd = -1, rlvr_rep_fd = -1;
static pid_t rlvr_child = -1;
static long rlvr_calls = 0, rlvr_asserts = 0;
static char rlvr_sentinel[200];

static void rlvr_start(void) {
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* the candidate (same uid) cannot ptrace this process or open its /proc */
  FILE *f = fopen("rlvr_nonce", "r");
  if (!f || !fgets(rlvr_sentinel, sizeof rlvr_sentinel, f)) rlvr_die("the tests' runner has no sentinel");
  fclose(f);
  unlink("rlvr_nonce");
  /* the tests' binary and source (the driver writes a job's files again before its run): gone before the
   * candidate's process exists */
  unlink("main");
  unlink("main.c");
  unlink("main.cpp");
  rlvr_sentinel[strcspn(rlvr_sentinel, "\r\n")] = 0;
  int a[2], b[2];
  if (pipe(a) || pipe(b)) rlvr_die("the tests' runner cannot make its pipes");
  for (int k = 0; k < 2; k++) fcntl(a[k], F_SETFD, FD_CLOEXEC), fcntl(b[k], F_SETFD, FD_CLOEXEC);
  fflush(stdout);
  fflush(stderr);
  rlvr_child = fork();
  if (rlvr_child < 0) rlvr_die("the tests' runner cannot start the candidate");
  if (rlvr_child == 0) {
    int r = dup(a[0]), w = dup(b[1]), nul = open("/dev/null", O_RDONLY);
    if (r < 0 || w < 0 || nul < 0) _exit(127);
    dup2(nul, 0);
    dup2(2, 1); /* the candidate's prints go to stderr: never the verdict's stdout */
    dup2(r, 3);
    dup2(w, 4);
    for (int fd = 5; fd < 65536; fd++) close(fd);
    execl("./rlvr_cand", "rlvr_cand", (char *)NULL);
    _exit(127);
  }
  close(a[0]);
  close(b[1]);
  rlvr_req_fd = a[1];
  rlvr_rep_fd = b[0];
  signal(SIGPIPE, SIG_IGN);
}

static void rlvr_gone(void) {
  int st = 0;
  fflush(stdout);
  if (waitpid(rlvr_child, &st, 0) == rlvr_child && WIFEXITED(st) && WEXITSTATUS(st) == 0) {
    fputs("\nthe candidate's program ended before the tests finished\n", stderr);
    fflush(stderr);
    _exit(0); /* exit 0 without the sentinel: never a pass (code.early_exit) */
  }
  if (WIFSIGNALED(st)) fprintf(stderr, "\nthe candidate's process was killed by signal %d during a call\n", WTERMSIG(st));
  else fprintf(stderr, "\nthe candidate's process exited with status %d during a call\n", WEXITSTATUS(st));
  fflush(stderr);
  _exit(1);
}

static void rlvr_call(const rlvr_buf *req, rlvr_buf *rep) {
  rlvr_calls++;
  if (rlvr_send(rlvr_req_fd, req) || rlvr_recv(rlvr_rep_fd, rep)) rlvr_gone();
}

static void rlvr_finish(void) {
  fflush(stdout);
  printf("\n%s\n%s:ran:{\"tests\":1,\"asserts\":%ld,\"calls\":%ld}\n", rlvr_sentinel, rlvr_sentinel, rlvr_asserts,
         rlvr_calls);
  fflush(stdout);
  close(rlvr_req_fd);
  kill(rlvr_child, SIGKILL);
  _exit(0);
}

/* -- the candidate's side: answer calls until the tests close the pipe ---------------------------------------- */
static void rlvr_serve(void (*dispatch)(long f, rlvr_in *in, rlvr_buf *out)) {
  rlvr_buf req = {0, 0, 0}, rep = {0, 0, 0};
  while (rlvr_recv(3, &req) == 0) {
    rlvr_in in = {req.p, req.p + req.n};
    long f = (long)rlvr_get_i(&in, 0, 1000000);
    rep.n = 0;
    rlvr_add(&rep, "r", 1);
    dispatch(f, &in, &rep);
    fflush(stdout);
    if (rlvr_send(4, &rep)) break;
  }
  fflush(stdout);
  _exit(0);
}
#endif
