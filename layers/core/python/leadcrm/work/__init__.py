"""Who follows up: tasks, follow-ups, touches and call outcomes, task closing, the work queue, the urgent prompt
and the digest.
"""
