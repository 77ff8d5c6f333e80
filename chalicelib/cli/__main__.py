"""``python -m chalicelib.cli``: the same as the ``cronhook`` console script."""

from chalicelib.cli.root import main

if __name__ == "__main__":  # pragma: no cover
    main()
