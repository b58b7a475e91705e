"""RCA-100 root-cause analysis: the real v1.1 data and its synthetic stand-in share one environment and tools."""
