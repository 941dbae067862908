"""Match2: for each position, is there a partner whose sum with it is 0 mod p."""
