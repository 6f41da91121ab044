(function(){
var R={{ refresh_s }};
function host(){try{return window.top!==window?window.top.document:null;}catch(x){return null;}}
function stored(key){try{var v=localStorage.getItem(key);if(v===null)return null;try{var j=JSON.parse(v);return typeof j==='string'?j:v;}catch(x){return v;}}catch(x){return null;}}
function theme(){var d=host();if(d){var c=d.documentElement.classList;if(c.contains('dark'))return 'dark';if(c.contains('light'))return 'light';}
var t=stored('theme');if(t==='dark'||t==='light')return t;
return window.matchMedia&&window.matchMedia('(prefers-color-scheme: dark)').matches?'dark':'light';}
function paint(){document.documentElement.dataset.theme=theme();}
function pad(n){return (n<10?'0':'')+n;}
function fmt(iso,tz){var d=new Date(iso);if(isNaN(d))return null;var o={year:'numeric',month:'2-digit',day:'2-digit',hour:'2-digit',minute:'2-digit',second:'2-digit',hourCycle:'h23',timeZoneName:'short'};
if(tz)o.timeZone=tz;var p={};try{new Intl.DateTimeFormat('en-US',o).formatToParts(d).forEach(function(x){p[x.type]=x.value;});}catch(x){return null;}
return p.year+'-'+p.month+'-'+p.day+' '+p.hour+':'+p.minute+':'+p.second+' '+p.timeZoneName;}
function times(){var tz=stored('timezone');document.querySelectorAll('time[datetime]').forEach(function(t){var s=fmt(t.getAttribute('datetime'),tz||undefined);if(s)t.textContent=t.dataset.format==='time'?s.slice(11,19):s;});}
function span(s){s=Math.max(0,Math.round(s));var h=Math.floor(s/3600),m=Math.floor(s%3600/60),x=s%60;return h?h+'h '+pad(m)+'m '+pad(x)+'s':m+'m '+pad(x)+'s';}
function elapsed(){document.querySelectorAll('[data-since]').forEach(function(e){var t=Date.parse(e.dataset.since);if(!isNaN(t))e.textContent=span((Date.now()-t)/1000);});}
function apply(){var s=document.getElementById('severity');var min=s?+s.value:0;
document.querySelectorAll('ol.log li').forEach(function(li){li.hidden=(+li.dataset.rank)<min;});times();elapsed();}
function tick(){var m=document.querySelector('main');if(!m||m.dataset.running!=='1')return;
fetch(location.pathname+'?fragment=1',{credentials:'same-origin'}).then(function(r){
if(!r.ok)throw new Error(r.status);return r.text();}).then(function(t){
var open={};document.querySelectorAll('section[data-replica]>details[open]').forEach(function(d){open[d.parentNode.dataset.replica]=1;});
document.querySelector('main').outerHTML=t;
document.querySelectorAll('section[data-replica]>details').forEach(function(d){if(open[d.parentNode.dataset.replica])d.open=true;});
apply();setTimeout(tick,R*1000);
}).catch(function(){setTimeout(tick,R*1000);});}
function follow(e){var a=e.target.closest?e.target.closest('a[target]'):null;
if(!a||window.top===window||!/^https?:$/.test(a.protocol))return;
var d=host();if(!d)return;
e.preventDefault();var b=d.createElement('a');b.href=a.href;b.target=a.target;b.rel=a.rel;
d.body.appendChild(b);b.click();b.remove();}
paint();
document.addEventListener('click',follow);
document.addEventListener('DOMContentLoaded',function(){var s=document.getElementById('severity');
if(s)s.addEventListener('change',apply);apply();setInterval(elapsed,1000);setTimeout(tick,R*1000);
var d=host();if(d&&window.MutationObserver)new MutationObserver(paint).observe(d.documentElement,{attributes:true,attributeFilter:['class']});
window.addEventListener('storage',function(){paint();times();});
if(window.matchMedia)window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change',paint);});
})();
