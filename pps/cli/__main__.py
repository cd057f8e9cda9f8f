"""`python -m engine.cli`: what tests, hooks and the stdio bridge spawn."""

from pps.cli import main

main()
