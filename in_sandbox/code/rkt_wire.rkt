#lang racket/base
;; The plain data Racket's two assert-mode processes exchange (issue 49; rkt_tests.rkt and rkt_candidate.rkt
;; require it): one JSON line a message; booleans, exact integers, finite flonums and strings as themselves, the
;; rest tagged: {"n": "+nan.0" | "+inf.0" | "-inf.0"}, {"q": [numerator, denominator]} (an exact rational),
;; {"y": name} (a symbol), {"k": name} (a keyword), {"c": code point} (a char), {"l": [...]} (a list),
;; {"p": [car, cdr]} (an improper pair), {"v": [...]} (a vector), {"h": [[key, value], ...], "m": mutable?,
;; "e": "equal" | "eqv" | "eq"} (a hash), {"u": 0} (void). Anything else (a procedure, a struct, a class equal to
;; everything) is refused: it never crosses.
(require json racket/list racket/math)
(provide wire-encode wire-decode wire-send wire-read)

(define MAX-DEPTH 200)

(define (wire-encode v [depth 0])
  (when (> depth MAX-DEPTH) (error "containers nested too deep"))
  (define (e x) (wire-encode x (add1 depth)))
  (cond
    [(boolean? v) v]
    [(exact-integer? v) v]
    [(flonum? v) (if (or (nan? v) (infinite? v)) (hasheq 'n (number->string v)) v)]
    [(and (rational? v) (exact? v)) (hasheq 'q (list (numerator v) (denominator v)))]
    [(string? v) v]
    [(symbol? v) (hasheq 'y (symbol->string v))]
    [(keyword? v) (hasheq 'k (keyword->string v))]
    [(char? v) (hasheq 'c (char->integer v))]
    [(void? v) (hasheq 'u 0)]
    [(list? v) (hasheq 'l (map e v))]
    [(pair? v) (hasheq 'p (list (e (car v)) (e (cdr v))))]
    [(vector? v) (hasheq 'v (map e (vector->list v)))]
    [(hash? v)
     (hasheq 'h (for/list ([(k x) (in-hash v)]) (list (e k) (e x)))
             'm (not (immutable? v))
             'e (cond [(hash-equal? v) "equal"] [(hash-eqv? v) "eqv"] [else "eq"]))]
    [else (error (format "a ~a is not plain data" (if (procedure? v) "procedure" "value of this kind")))]))

(define (bad) (error "not an encoded value"))

(define (wire-decode v [depth 0])
  (when (> depth MAX-DEPTH) (error "containers nested too deep"))
  (define (d x) (wire-decode x (add1 depth)))
  (cond
    [(or (boolean? v) (string? v) (exact-integer? v)) v]
    [(real? v) (exact->inexact v)]
    [(and (hash? v) (hash-has-key? v 'n))
     (case (hash-ref v 'n) [("+nan.0") +nan.0] [("+inf.0") +inf.0] [("-inf.0") -inf.0] [else (bad)])]
    [(and (hash? v) (hash-has-key? v 'q))
     (define q (hash-ref v 'q))
     (unless (and (list? q) (= (length q) 2) (andmap exact-integer? q) (positive? (cadr q))) (bad))
     (/ (car q) (cadr q))]
    [(and (hash? v) (string? (hash-ref v 'y #f))) (string->symbol (hash-ref v 'y))]
    [(and (hash? v) (string? (hash-ref v 'k #f))) (string->keyword (hash-ref v 'k))]
    [(and (hash? v) (exact-nonnegative-integer? (hash-ref v 'c #f))) (integer->char (hash-ref v 'c))]
    [(and (hash? v) (hash-has-key? v 'u)) (void)]
    [(and (hash? v) (list? (hash-ref v 'l #f))) (map d (hash-ref v 'l))]
    [(and (hash? v) (list? (hash-ref v 'p #f)) (= (length (hash-ref v 'p)) 2))
     (cons (d (car (hash-ref v 'p))) (d (cadr (hash-ref v 'p))))]
    [(and (hash? v) (list? (hash-ref v 'v #f))) (list->vector (map d (hash-ref v 'v)))]
    [(and (hash? v) (list? (hash-ref v 'h #f)))
     (define pairs
       (for/list ([kv (hash-ref v 'h)])
         (unless (and (list? kv) (= (length kv) 2)) (bad))
         (cons (d (car kv)) (d (cadr kv)))))
     (define kind (hash-ref v 'e "equal"))
     (if (eq? (hash-ref v 'm #f) #t)
         (let ([h (case kind [("eqv") (make-hasheqv)] [("eq") (make-hasheq)] [else (make-hash)])])
           (for ([p pairs]) (hash-set! h (car p) (cdr p)))
           h)
         (for/fold ([h (case kind [("eqv") (hasheqv)] [("eq") (hasheq)] [else (hash)])]) ([p pairs])
           (hash-set h (car p) (cdr p))))]
    [else (bad)]))

(define (wire-send out msg)
  (write-json msg out)
  (newline out)
  (flush-output out))

;; the next message, or eof where the other side closed its end
(define (wire-read in)
  (define line (read-line in 'linefeed))
  (if (eof-object? line) line (string->jsexpr line)))
