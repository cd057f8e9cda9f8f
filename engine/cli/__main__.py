"""`python -m engine.cli`: what tests, hooks and the stdio bridge spawn."""

from engine.cli import main

main()
