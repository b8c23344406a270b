"""How `nbdev-export` writes this package's `__all__`: wrapped so that its first line, with the `__all__ = ` nbdev puts
before it, fits in 120 characters as every other line does (nbdev 3 wraps the list alone, then prefixes it).

pyproject.toml names `keep` in `[tool.nbdev] export_procs`, so nbdev imports this module before it exports; nothing
else imports it. Importing it is what it does: `keep` changes no cell."""
from textwrap import TextWrapper
import nbdev.maker

_PREFIX = '__all__ = '

class _AllWrapper(TextWrapper):
    "nbdev's wrapper of `__all__`'s list, counting the prefix it writes before the first line"
    def wrap(self, text):
        lines = TextWrapper(width=self.width, initial_indent=_PREFIX, subsequent_indent=self.subsequent_indent,
                            break_long_words=self.break_long_words).wrap(text)
        return [lines[0].removeprefix(_PREFIX)] + lines[1:] if lines else lines

nbdev.maker.TextWrapper = _AllWrapper   # `ModuleMaker.make` looks the name up when it writes a module

def keep(cell): "An export processor that leaves every cell as it is"
