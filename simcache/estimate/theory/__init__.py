"""The queueing theory the estimate solves with: stations, states, formulas and one step of mean
value analysis."""
