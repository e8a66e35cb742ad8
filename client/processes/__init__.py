"""Agent child processes: spawned under the supervisor in their own process group, recorded
in the state directory, and ended as a group so none outlives the client (issue 14 §3)."""
