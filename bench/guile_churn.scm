;; Answer benchmark workload (bench/run_answer_bench.sh): ROUNDS rounds (the first argument,
;; default 600), each building a list of 20 000 fresh 8-character strings and keeping the last 4
;; lists: a steady heap of ~5 MB of small objects (pairs, strings, stringbufs) over which
;; everything else is garbage, so the collector runs every few rounds.
(define (build n)
  (let loop ((i 0) (acc '()))
    (if (= i n) acc (loop (+ i 1) (cons (make-string 8 #\a) acc)))))
(define rounds
  (let ((args (cdr (command-line))))
    (if (null? args) 600 (string->number (car args)))))
(define keep (make-vector 4 '()))
(let loop ((r 0))
  (when (< r rounds)
    (vector-set! keep (modulo r 4) (build 20000))
    (loop (+ r 1))))
(display (length (vector-ref keep 0)))
(newline)
