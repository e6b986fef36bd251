"""What the store's Python tests share: a scratch directory, the failures gathered, heapman and
heaprec runs checked for their exit code, and gc_game builds recorded (4 levels of 20 frames)."""
import os
import subprocess
import sys
import tempfile


class Work:
    def __init__(self, prefix, heaprec, gc_game):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.heaprec, self.gc_game = heaprec, gc_game
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)
        print("FAIL: " + msg, file=sys.stderr)

    def run(self, args, check_rc=None):
        r = subprocess.run(args, capture_output=True, text=True, timeout=120,
                           env=dict(os.environ, HOME=self.dir))
        if check_rc is not None and r.returncode != check_rc:
            self.fail("%s: exit %d (expected %d): %s" % (" ".join(args), r.returncode, check_rc,
                                                         r.stderr.strip()))
        return r

    def record(self, log, build):
        """gc_game's build `build` (its leak from 17 on) recorded into `log`."""
        self.run([self.heaprec, "run", "-o", log, "--", self.gc_game, "4", "20", str(build)], 0)
