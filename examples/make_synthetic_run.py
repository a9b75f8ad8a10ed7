"""Write the bundled *synthetic* RL run: no model wrote these traces, a seeded script did.

Five checkpoints (global_step_100 ... global_step_500), two datasets (integer word problems and
fraction problems), 40 problems each, 16 samples per problem: 6,400 traces with gold answers,
answers in varied equivalent LaTeX forms and some length-limit truncations. Planted cause: from
step 400 on, the hardest problems acquire one consistent wrong answer carried by traces with an
explicit arithmetic slip, so majority voting turns harmful (sc_gain@16 < 0) while pass@1 rises.

Usage: python examples/make_synthetic_run.py [OUT.jsonl] [--seed N]
Then:  misstep summary OUT.jsonl
"""

from __future__ import annotations

import argparse
from pathlib import Path

from misstep.pipelines import make_synthetic_run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="synthetic_run.jsonl", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    path = make_synthetic_run(args.out, seed=args.seed)
    print(f"wrote a synthetic run to {path}")


if __name__ == "__main__":
    main()
