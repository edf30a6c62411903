"""What the scripts' own checks (scripts/check_*.py) assert with."""
import sys


def expect(cond, what):
    if not cond:
        print(f"FAIL: {what}")
        sys.exit(1)


def expect_error(proc, needle, what):
    """One line `error: ...` naming `needle` on stderr, exit 2, nothing on stdout."""
    lines = proc.stderr.strip().splitlines()
    expect(proc.returncode == 2, f"{what}: exit {proc.returncode}, want 2")
    expect(len(lines) == 1 and lines[0].startswith("error: ") and needle in lines[0],
           f"{what}: stderr {proc.stderr!r} should be one error line naming {needle!r}")
    expect(proc.stdout == "", f"{what}: printed {proc.stdout!r}")
