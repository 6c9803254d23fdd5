"""The dialog as the model sees it: interactions and their projection into a chat
(`projection`), the flat chat messages hosts read and seed (`messages`), and the history budget
that keeps each prompt within the model's context (`history`).

May import the turn's results (`turns.results`) and the rooms below `turns`.
"""
