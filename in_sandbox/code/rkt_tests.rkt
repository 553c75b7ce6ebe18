#lang racket/base
;; The tests' process of Racket assert mode (issue 49): runs in the toolchain sandbox, never in the service.
;;
;; Racket reads its own executable (its boot files), so instead of an unreadable copy this process makes itself
;; non-dumpable with prctl(PR_SET_DUMPABLE, 0) first: the candidate's process (same uid) cannot open its /proc
;; files or ptrace it. Run with -U (no user-specific collections: nothing the candidate could plant in HOME). It
;; reads the sentinel (rlvr_nonce) and the tests (rlvr_tests.rkt), deletes both, loads racket and rackunit into a
;; fresh namespace, then starts the candidate's process (rkt_candidate.rkt: the candidate's module in a racket of
;; its own, its stdout going to stderr) and talks to it over two FIFOs with plain data (rkt_wire.rkt). Every name
;; the tests read that racket does not bind and the candidate defines as a procedure is a procedure here that
;; crosses over; the tests' forms are evaluated in that namespace, rackunit's checks counted, a failed check
;; ending them; their exit ends them (0: their end; else a failure). The sentinel and what ran go on this
;; process's stdout, which the candidate cannot reach. A failed test exits 1 saying "Test failed"; the tests' own
;; error before any call into the candidate prints ``{sentinel}:bad_reference:...``; the candidate's process
;; ending early exits 0 without the sentinel (never a pass).
(require ffi/unsafe racket/file racket/list racket/port racket/string racket/system json "rlvr_wire.rkt")

(unless (zero? ((get-ffi-obj "prctl" #f (_fun _int _long _long _long _long -> _int)) 4 0 0 0 0))
  (error "prctl(PR_SET_DUMPABLE) failed"))
(define sentinel (string-trim (file->string "rlvr_nonce")))
(define tests (file->string "rlvr_tests.rkt"))
(delete-file "rlvr_nonce")
(delete-file "rlvr_tests.rkt")
(define real-exit (exit-handler))
(define stdout (current-output-port))
(define stderr (current-error-port))
(define ran (make-hasheq (list (cons 'tests 1) (cons 'asserts 0) (cons 'calls 0))))
(define (say what)
  (write-string (string-append "\n" sentinel ":" what "\n") stdout)
  (flush-output stdout)
  (real-exit 0)) ; exit 0: the driver keeps the stdout of a run that ended well
(define (ended)
  (write-string "\nthe candidate's program ended before the tests finished\n" stderr)
  (real-exit 0)) ; exit 0 without the sentinel: never a pass (code.early_exit)
(define (failed message)
  (write-string (string-append message "\nTest failed: " message "\n") stderr)
  (flush-output stderr)
  (real-exit 1))
(define (one-line s) (jsexpr->string s))

;; the candidate's process starts now, expanding its module while this one loads racket and rackunit (from the
;; installation only: -U): nothing of ours is read from the job's directory after this point
(unless (system* "/usr/bin/mkfifo" "rlvr_req" "rlvr_rep") (error "mkfifo failed"))
(define-values (child child-out child-in child-err)
  (subprocess stderr #f stderr (find-executable-path "racket") "rlvr_candidate.rkt"))
(close-output-port child-in)
(define req (open-output-file "rlvr_req" #:exists 'append))
(define rep (open-input-file "rlvr_rep"))

;; the tests' forms, read as data (no reader extensions), without their #lang line
(define forms
  (with-handlers ([exn:fail? (lambda (e) (say (string-append "bad_reference:" (one-line (exn-message e)))))])
    (parameterize ([read-accept-reader #f] [read-accept-lang #f])
      (port->list read (open-input-string (regexp-replace #rx"^[ \t\r\n]*#lang[^\n]*" tests ""))))))
(define ns (make-base-namespace))
(parameterize ([current-namespace ns])
  (namespace-require 'racket)
  (namespace-require 'rackunit))
(define (bound? s)
  (parameterize ([current-namespace ns])
    (or (identifier-binding (namespace-symbol->identifier s))
        (namespace-variable-value s #t (lambda () #f)))))
(define wanted
  (let walk ([x forms] [acc '()])
    (cond [(symbol? x) (if (or (memq x acc) (bound? x)) acc (cons x acc))]
          [(pair? x) (walk (cdr x) (walk (car x) acc))]
          [(vector? x) (walk (vector->list x) acc)]
          [else acc])))

(define (ask msg)
  (with-handlers ([exn:fail? (lambda (e) (ended))])
    (wire-send req msg))
  (define reply (with-handlers ([exn:fail? (lambda (e) eof)]) (wire-read rep)))
  (if (hash? reply) reply (ended)))
(define (call name args)
  (hash-update! ran 'calls add1)
  (define reply (ask (hasheq 'call (symbol->string name) 'args (wire-encode args))))
  (define value (hash-ref reply 'value #f))
  (cond
    [(list? value)
     (when (regexp-match? #rx"\"n\":" (jsexpr->string value)) (hash-set! ran 'nonfinite 1))
     (apply values (map wire-decode value))]
    [else
     (define r (hash-ref reply 'raise #f))
     (define kind (if (and (list? r) (= (length r) 2)) (car r) "fail"))
     (define message (if (and (list? r) (= (length r) 2) (string? (cadr r))) (cadr r) "an unreadable answer"))
     (raise ((case kind
               [("divide-by-zero") make-exn:fail:contract:divide-by-zero]
               [("contract") make-exn:fail:contract]
               [else make-exn:fail])
             message (current-continuation-marks)))]))

(define hello (ask (hasheq 'names (map symbol->string wanted))))
(unless (hash? (hash-ref hello 'names #f))
  (write-string (format "~a\n" (hash-ref hello 'raise "the candidate's code failed")) stderr)
  (real-exit 1))
(for ([(n kind) (in-hash (hash-ref hello 'names))])
  (when (and (memq n wanted) (equal? kind "call"))
    (namespace-set-variable-value! n (procedure-rename (lambda args (call n args)) n) #t ns)))

;; rackunit's checks, counted; a failed one ends the tests; their exit ends them, not this process
(struct tests-exit (code))
(struct check-failed (message))
(define check-around (parameterize ([current-namespace ns]) (eval 'current-check-around)))
(define check-handler (parameterize ([current-namespace ns]) (eval 'current-check-handler)))
(define original-around (check-around))
(define outcome
  (parameterize ([current-namespace ns]
                 [exit-handler (lambda (code) (raise (tests-exit code)))])
    (check-handler (lambda (e) (raise (check-failed (if (exn? e) (exn-message e) (format "~s" e))))))
    (check-around (lambda (thunk . rest)
                    (hash-update! ran 'asserts add1)
                    (apply original-around thunk rest)))
    (with-handlers ([(lambda (e) #t) values])
      (for ([form forms]) (eval form ns))
      #f)))
(cond
  [(not outcome) (void)]
  [(tests-exit? outcome)
   (unless (memv (tests-exit-code outcome) '(0 #t))
     (failed (format "the tests exited with status ~a" (tests-exit-code outcome))))]
  [(check-failed? outcome) (failed (format "a check failed: ~a" (check-failed-message outcome)))]
  [else
   (define message (if (exn? outcome) (exn-message outcome) (format "~s" outcome)))
   (define missing
     (for/or ([n wanted])
       (regexp-match? (regexp (string-append "^" (regexp-quote (symbol->string n)) ": undefined")) message)))
   (when (and (not missing) (zero? (hash-ref ran 'calls)))
     (say (string-append "bad_reference:" (one-line message))))
   (failed message)])
(void (write-string (string-append "\n" sentinel "\n") stdout))
(say (string-append "ran:" (jsexpr->string ran)))
