import json, os, urllib.request
from pathlib import Path
creds = json.loads((Path.home() / '.config/gcloud/application_default_credentials.json').read_text())
body = json.dumps({'client_id': creds['client_id'], 'client_secret': creds['client_secret'], 'refresh_token': creds['refresh_token'], 'grant_type': 'refresh_token'}).encode()
tok = json.loads(urllib.request.urlopen('https://oauth2.googleapis.com/token', data=body).read())
print(tok['expires_in'])
