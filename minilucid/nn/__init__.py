"""Neural-network building blocks; `minilucid.nn.functional` holds the functions."""
