(function(){
var R={{ refresh_s }};
function apply(){var s=document.getElementById('severity');var min=s?+s.value:0;
document.querySelectorAll('ol.log li').forEach(function(li){li.hidden=(+li.dataset.rank)<min;});}
function tick(){var m=document.querySelector('main');if(!m||m.dataset.running!=='1')return;
fetch(location.pathname+'?fragment=1',{credentials:'same-origin'}).then(function(r){
if(!r.ok)throw new Error(r.status);return r.text();}).then(function(t){
document.querySelector('main').outerHTML=t;apply();setTimeout(tick,R*1000);
}).catch(function(){setTimeout(tick,R*1000);});}
function follow(e){var a=e.target.closest?e.target.closest('a[target]'):null;
if(!a||window.top===window||!/^https?:$/.test(a.protocol))return;
var d;try{d=window.top.document;}catch(x){return;}
e.preventDefault();var b=d.createElement('a');b.href=a.href;b.target=a.target;b.rel=a.rel;
d.body.appendChild(b);b.click();b.remove();}
document.addEventListener('click',follow);
document.addEventListener('DOMContentLoaded',function(){var s=document.getElementById('severity');
if(s)s.addEventListener('change',apply);apply();setTimeout(tick,R*1000);});
})();
