"""What is told: the analysis that joins diagnosis and remedies, talking points,
outcomes, records, diffs, charts as data, the postmortem's story. May import every other
layer of the core except governance.
"""
