"""What a person does with their own account: signing in and out, and the operator's
recovery link (service.py). Answering an invitation is the organizations' (hangar.orgs)."""
