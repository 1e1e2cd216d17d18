#!/usr/bin/env python3
# The code measures of issue 33: the longest functions in src/ (a function is a definition
# line at column 0 or 2 through its closing brace; heuristic, C++ only) and the src/, tests/
# and lua/ files over 500 lines. Usage: scripts/measure-code.py [DIR, default .]
import re,os,sys,subprocess
root=sys.argv[1] if len(sys.argv) > 1 else "."
def files(exts, dirs):
    for d in dirs:
        for dp,_,fs in os.walk(os.path.join(root,d)):
            if 'node_modules' in dp: continue
            for f in fs:
                if f.endswith(exts): yield os.path.join(dp,f)
# longest functions: lines between a line ending with '{' at indentation 0 or 2 (function def) and its matching '}' at same indent
res=[]
for p in files(('.cpp',),['src','tests']):
    L=open(p,errors='replace').read().split('\n')
    i=0
    while i<len(L):
        l=L[i]
        if re.match(r'^( {0,2})[A-Za-z][\w:<>,\s*&]*[\w~]+\(', l) and not re.match(r'^\s*(namespace|struct|class|enum|return|if|for|while|switch|TEST_CASE|using|static_assert)\b', l):
            ind=re.match(r'^( *)',l).group(1)
            k=i
            while k<len(L) and k<i+8 and not L[k].rstrip().endswith('{') and ';' not in L[k]: k+=1
            if k<len(L) and L[k].rstrip().endswith('{') and ';' not in ''.join(L[i:k+1]):
                j=k+1
                while j<len(L) and L[j]!=ind+'}' and not L[j].startswith(ind+'};'): j+=1
                res.append((j-i+1,os.path.relpath(p,root),i+1,l.strip()[:70]))
                i=j
        i+=1
res.sort(reverse=True)
print('longest functions (src):')
for r in [r for r in res if r[1].startswith('src')][:6]: print('  ',r)
big=[]
for p in files(('.cpp','.hpp','.lua'),['src','tests','lua']):
    n=sum(1 for _ in open(p,errors='replace'))
    if n>500: big.append((n,os.path.relpath(p,root)))
print('files over 500 lines:',sorted(big,reverse=True))
