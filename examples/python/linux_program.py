"""Run a static AArch64 Linux program from Python and look at what it did.

    pip install .            # from the repository root
    python examples/python/linux_program.py [PROGRAM [ARGS...]]

Without arguments it runs tests/guest/prebuilt/hello from this repository.
"""

import os
import sys

import armada

here = os.path.dirname(os.path.abspath(__file__))
argv = sys.argv[1:] or [os.path.join(here, "..", "..", "tests", "guest", "prebuilt", "hello")]

# Output is captured; stdin is what you pass (bytes), env defaults to this process's.
result = armada.run(argv, stdin=b"", env={"LANG": "C"})

print(f"exit code:    {result.exit_code}")
print(f"stop reason:  {result.stop_reason}")
print(f"instructions: {result.instructions:,} in {result.elapsed * 1000:.1f} ms")
print(f"stdout:       {result.stdout!r}")
print(f"stderr:       {result.stderr!r}")
if result.message:
    print(f"armada says:  {result.message}")

# A budget: a program that runs too long is stopped, not waited for.
limited = armada.run(argv, max_instructions=1000)
print(f"with max_instructions=1000: stop reason {limited.stop_reason!r}, "
      f"exit code {limited.exit_code}, {limited.instructions} instructions")

# Errors are exceptions with clear messages; faults in the guest are results.
try:
    armada.run(["/no/such/program"])
except armada.ElfError as e:
    print(f"ElfError: {e}")
