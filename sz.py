#!/usr/bin/env python3
"""count the library's lines of code: lines holding a real token, not blank lines, comments or docstrings"""
import argparse, io, os, sys, token, tokenize
from collections import defaultdict

BUDGET = 15500
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tinygrad")
SKIP = {token.COMMENT, token.NL, token.NEWLINE, token.INDENT, token.DEDENT, token.ENCODING, token.ENDMARKER}

def count_file(path: str) -> tuple[int, int]:
  """(lines of code, tokens) of one python file"""
  with open(path, "rb") as f: toks = [t for t in tokenize.tokenize(io.BytesIO(f.read()).readline) if t.type not in (token.COMMENT, token.NL)]
  lines: set[int] = set()
  ntok, i = 0, 0
  while i < len(toks):
    t = toks[i]
    if t.type in SKIP:
      i += 1
      continue
    # a docstring is a string (or implicitly joined strings) standing alone as a whole statement
    if t.type == token.STRING and toks[i-1].type in (token.NEWLINE, token.INDENT, token.DEDENT, token.ENCODING):
      j = i
      while toks[j].type == token.STRING: j += 1
      if toks[j].type in (token.NEWLINE, token.ENDMARKER):
        i = j
        continue
    ntok += 1
    lines.update(range(t.start[0], t.end[0] + 1))
    i += 1
  return len(lines), ntok

def gather(root: str) -> dict[str, tuple[int, int]]:
  ret = {}
  for dirpath, dirnames, filenames in os.walk(root):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith((".", "__pycache__")))
    for fn in sorted(filenames):
      if fn.endswith(".py"): ret[os.path.relpath(os.path.join(dirpath, fn), os.path.dirname(root))] = count_file(os.path.join(dirpath, fn))
  return ret

def main() -> int:
  parser = argparse.ArgumentParser(description=__doc__)
  parser.add_argument("--folders", action="store_true", help="print only the per-folder totals")
  parser.add_argument("--budget", type=int, default=BUDGET, help=f"fail above this many lines (default {BUDGET})")
  args = parser.parse_args()
  files = gather(ROOT)
  folders: dict[str, list[int]] = defaultdict(lambda: [0, 0])
  for path, (loc, ntok) in files.items():
    folders[os.path.dirname(path)][0] += loc
    folders[os.path.dirname(path)][1] += ntok
  total = sum(loc for loc, _ in files.values())
  if args.folders:
    print(f"{'folder':40s} {'lines':>7s} {'tokens':>8s}")
    for folder in sorted(folders): print(f"{folder:40s} {folders[folder][0]:7d} {folders[folder][1]:8d}")
  else:
    print(f"{'file':50s} {'lines':>7s} {'tokens':>8s} {'tok/line':>9s}")
    for folder in sorted(folders):
      for path in sorted(p for p in files if os.path.dirname(p) == folder):
        loc, ntok = files[path]
        print(f"{path:50s} {loc:7d} {ntok:8d} {ntok/max(loc, 1):9.1f}")
      print(f"{folder + '/ (folder)':50s} {folders[folder][0]:7d} {folders[folder][1]:8d}\n")
  print(f"total line count: {total}   (budget {args.budget})")
  if total > args.budget:
    print(f"ERROR: tinygrad/ has {total} lines of code, over the budget of {args.budget} by {total - args.budget}", file=sys.stderr)
    return 1
  return 0

if __name__ == "__main__": sys.exit(main())
