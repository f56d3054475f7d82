"""The report formats' names, in the order `--help` lists them: the one list that the command
line (`--output-format`), the config reader (`output-format`) and the renderers share. It lives
apart from `tkcheck.render` so that reading a config or building the command line loads no
renderer."""

OUTPUT_FORMATS = ("full", "concise", "json", "json-lines", "sarif", "github", "junit")

__all__ = ["OUTPUT_FORMATS"]
