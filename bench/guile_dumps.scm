;; RAM dump benchmark workload (bench/run_dump_bench.sh): 30 rounds, each keeping a list of
;; 20 000 fresh strings and dropping a list of 100 000: a growing heap of small objects (pairs,
;; strings), many collections.
(define (build n) (let loop ((i 0) (acc '())) (if (= i n) acc (loop (+ i 1) (cons (make-string 20 #\a) acc)))))
(define keep '())
(let loop ((r 0)) (when (< r 30) (set! keep (cons (build 20000) keep)) (build 100000) (loop (+ r 1))))
(display (length keep)) (newline)
