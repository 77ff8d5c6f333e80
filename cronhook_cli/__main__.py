"""``python -m cronhook_cli``: the same as the ``cronhook`` console script."""

from cronhook_cli.root import main

if __name__ == "__main__":  # pragma: no cover
    main()
