try:  # installed wheel: cli.py is mapped to tkcheck/cli/cli.py
    from .cli.cli import main
except ImportError:  # source checkout: cli.py beside the package is tkcheck.cli
    from .cli import main

if __name__ == "__main__":
    main()
