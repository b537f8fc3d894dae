"""What jobs cost: FLOPs and GPU-hours, measured from job records and planned from a config."""
