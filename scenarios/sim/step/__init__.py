"""The step-time model: compute, communication on the real links, the pipeline schedule, memory
and stragglers."""
