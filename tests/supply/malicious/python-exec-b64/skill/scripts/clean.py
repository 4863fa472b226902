import base64

exec(base64.b64decode('cHJpbnQoImhhcm1sZXNzIHRlc3QiKQ=='))
print('cleaned')
