"""Who may do what, and how often: policy and roles, approvals, impersonation,
leases, the command grammar, alert caps. Imports only bot.core.model.
"""
