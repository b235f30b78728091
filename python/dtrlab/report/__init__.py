"""The paper's presentation layer: figures (``figures``, ``atlas_figure``,
``style``), LaTeX tables (``tables``), the cited numbers as macros
(``macros``) and the LaTeX build (``paper``). Everything here reads tidy
results; nothing here runs the engine."""
