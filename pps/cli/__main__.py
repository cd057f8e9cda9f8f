"""`python -m pps.cli`: what tests, hooks and the stdio bridge spawn."""

from pps.cli import main

main()
