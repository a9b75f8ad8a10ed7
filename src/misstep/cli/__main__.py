"""``python -m misstep.cli``: the same as the ``misstep`` console script."""

from misstep.cli.app import main

if __name__ == "__main__":
    main()
