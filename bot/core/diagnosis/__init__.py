"""What the evidence says: attribution, findings and their rules, history and change
points, GPU holders, the ledger, the verdict. Imports only bot.core.model.
"""
