"""What a run may use and how long it takes: memory limits, thread pools and the cost model of the estimates."""
