"""Teams, members, roles and accounts (Django app), the bottom of the house: the one permission
module (``teams.permissions``) every door asks. It imports no other app."""
