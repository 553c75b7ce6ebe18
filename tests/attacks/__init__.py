"""Generated attacks: operators that mutate correct answers and programs from our own data, and the
invariants the service must keep on every mutation (a mutation never raises the reward)."""
