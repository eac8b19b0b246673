# attack: output flood — print without end, to exhaust the executor's memory or the client's.
# expect: output_limit — output is cut at the cap (truncated) and the run is stopped at once.
while True:
    print("flood " * 100)
