;; A Guile workload for the bdwgc recorder test (tests/integration/guile): allocates lists,
;; vectors, strings, hash tables and closures in rounds, keeping a small live set and dropping
;; the rest, so that the collector runs many times. Everything it prints depends only on the
;; computation (no addresses, no hash-table order, no times), so its output must be byte-identical
;; with and without the recorder.
(use-modules (ice-9 format) (srfi srfi-1))

(define rounds 25)
(define per-round 4000)

;; A deterministic pseudo-random sequence (linear congruential, 31 bits).
(define seed 12345)
(define (next-random!)
  (set! seed (modulo (+ (* seed 1103515245) 12345) 2147483648))
  seed)

(define (make-record i)
  ;; a list, a vector, a string and a closure per element: several object kinds
  (let* ((n (+ 1 (modulo i 7)))
         (lst (iota n i))
         (vec (make-vector n i))
         (str (string-append "item-" (number->string i) "-" (make-string n #\x)))
         (adder (lambda (k) (+ k i n))))
    (list lst vec str adder)))

(define (record-checksum r)
  (let ((lst (first r)) (vec (second r)) (str (third r)) (adder (fourth r)))
    (+ (apply + lst)
       (vector-fold (lambda (acc x) (+ acc x)) 0 vec)
       (string-length str)
       (adder 1))))

(define (vector-fold f init v)
  (let loop ((k 0) (acc init))
    (if (= k (vector-length v)) acc (loop (+ k 1) (f acc (vector-ref v k))))))

;; The live set: a hash table keyed by small integers, replaced entries become garbage.
(define live (make-hash-table))
(define live-size 512)

(define total 0)
(define (run-round r)
  (let loop ((i 0) (sum 0))
    (if (= i per-round)
        sum
        (let* ((x (next-random!))
               (rec (make-record (+ (* r per-round) i)))
               (c (record-checksum rec)))
          ;; one record in 8 replaces a live entry; the others die at once
          (when (zero? (modulo (quotient x 65536) 8))
            (hash-set! live (modulo (quotient x 1048576) live-size) rec))
          ;; a temporary string and a temporary list of strings, dropped at once
          (let ((tmp (map number->string (iota 5 x))))
            (loop (+ i 1) (+ sum c (string-length (apply string-append tmp)))))))))

(define (live-checksum)
  ;; sum over the entries in key order (hash-table order is not part of the output)
  (let loop ((k 0) (acc 0))
    (if (= k live-size)
        acc
        (let ((rec (hash-ref live k #f)))
          (loop (+ k 1) (if rec (+ acc (record-checksum rec)) acc))))))

(do ((r 0 (+ r 1))) ((= r rounds))
  (let ((s (run-round r)))
    (set! total (+ total s))
    (when (zero? (modulo (+ r 1) 10))
      (format #t "round ~a: sum ~a, live entries ~a, live checksum ~a~%"
              (+ r 1) s (hash-count (const #t) live) (live-checksum)))))

;; A big structure built and dropped: a few large objects too.
(define big (make-vector 200000 0))
(do ((k 0 (+ k 1))) ((= k (vector-length big)))
  (vector-set! big k (* k k)))
(format #t "big vector sum ~a~%" (vector-fold + 0 big))
(set! big #f)
(gc)

(format #t "total ~a~%" total)
;; how many collections ran: to stderr, since the count may differ under the recorder
(format (current-error-port) "gc-times ~a~%" (assq-ref (gc-stats) 'gc-times))
(format #t "sorted live keys ~a~%"
        (length (sort (hash-map->list (lambda (k v) k) live) <)))
