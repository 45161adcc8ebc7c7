"""Search: ranking (dense, keyword, hybrid, Rocchio, feedback), filters, explanations, map placement of queries."""
